"""Two different lessons the service tests write, and an item's history as (number, action, status)."""

LOGIN = dict(
    title="Sign in before looking for account data",
    description="Use when the task needs information only a logged-in user can see.",
    content="Find the login form first and submit the credentials; anonymous pages hide order history.",
)
DATES = dict(
    title="Type dates instead of clicking the calendar widget",
    description="Use when a form has a date picker.",
    content="Date picker popups are slow to navigate; typing an ISO date into the input is more reliable.",
)


def actions(item):
    return list(item.versions.order_by("number").values_list("number", "action", "status"))
