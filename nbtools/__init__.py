"""nbtools: notebook functions as LLM tools."""
