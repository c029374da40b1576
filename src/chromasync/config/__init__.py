"""Configuration: settings, the config file's schema and parsing, declared sources."""
