"""The seojobs client: talks HTTP only, installable without the server extras."""
