"""HTML views (session auth)."""
