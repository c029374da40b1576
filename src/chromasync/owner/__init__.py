"""The long-lived owner of a data dir: service, jobs, its socket client."""
