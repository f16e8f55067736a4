"""The one safe HTTP fetcher for page work (SSRF guard, robots.txt, politeness)."""
