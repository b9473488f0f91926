"""judgeaudit: audits of LLM judges (the library; it imports no Prefect)."""
