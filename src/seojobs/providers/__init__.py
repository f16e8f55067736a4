"""Provider adapters: one module per external API (IndexNow, Google, SERP APIs, ...)."""
