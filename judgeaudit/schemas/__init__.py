"""The data contracts: one Great Expectations suite per table, and their validation."""
