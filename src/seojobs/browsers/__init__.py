"""Chromium for the kinds that drive it (``slots``: warm browser slots; ``reaper``: the
wrapper that makes a browser die with its worker). A kind imports this, never another kind."""
