"""Planning: pure decisions about what to embed, write and delete, and the store's limits."""
