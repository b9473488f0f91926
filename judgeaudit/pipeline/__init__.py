"""The stages' doors: each resolves params.yaml once and calls the library with plain values."""
