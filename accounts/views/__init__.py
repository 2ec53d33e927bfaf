"""HTML views (session auth) of accounts, teams and members, banks, tokens and
audit. Each view parses, calls one service, renders; each action of the team,
bank and token pages is its own POST-only view. Access checks go through
accounts.access (non-member → 404, role too low → 403)."""
