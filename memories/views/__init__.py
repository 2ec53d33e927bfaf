"""HTML views of a bank's memories (session auth), one module per page or
region: the review queue, one item (also the queue's focus view) and its
actions, the item list, import/export, the retrieval playground, the focus
view's presence and the queue's assignments.

Each view: check access (viewers read; reviewers write) → parse a form →
call a service → render the page, or its named partial for htmx."""
