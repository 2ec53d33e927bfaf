"""What the tests of the memories pages share: their URLs and the htmx header."""

from django.urls import reverse

HTMX = {"HTTP_HX_REQUEST": "true"}


def page_urls(bank, item, trajectory):
    b = bank.public_id
    return {
        "review": reverse("memories:review", kwargs={"bank_id": b}),
        "focus": reverse("memories:review_focus", kwargs={"bank_id": b, "item_id": item.public_id}),
        "items": reverse("memories:items", kwargs={"bank_id": b}),
        "item": reverse("memories:item_detail", kwargs={"bank_id": b, "item_id": item.public_id}),
        "playground": reverse("memories:playground", kwargs={"bank_id": b}),
    }


def item_action(bank, item, action: str) -> str:
    """The URL of one action of the item page (approve, reject, edit, archive, merge, keep_both)."""
    return reverse(f"memories:item_{action}", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})
