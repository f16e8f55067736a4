"""seojobs: SEO work (index submission and checks, audits) as background jobs clients poll."""

__version__ = "0.1.0"
