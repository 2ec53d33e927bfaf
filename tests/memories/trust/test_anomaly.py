"""The anomaly score against the bank, with the real embedding model: a new
item unlike the bank's approved items gets an ``anomaly`` finding (and is not
served), an on-topic one does not; the per-bank calibration keeps the
false-flag rate on the bank's own approved items within the policy's setting;
below the minimum reference nothing is flagged and the Trust page says why;
the setting's bounds are enforced."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_edit
from memories.trust.anomaly.calibration import (
    MIN_REFERENCE,
    bank_anomaly_calibrate,
    banks_anomaly_recalibrate,
    threshold_at,
)
from memories.trust.anomaly.detect import ANOMALY_DETECTOR, bank_anomaly_threshold
from memories.trust.anomaly.models import AnomalyCalibration
from memories.trust.models import TrustPolicy
from memories.trust.risk_models import RiskFinding
from memories.trust.risks import memory_items_risk_scan
from memories.trust.services import bank_trust_policy_update
from reasoningbank_site.errors import Invalid
from tests.factories import propose_item

# Thirty lessons of a web-shopping agent: the bank's usual business.
SHOP = [
    (
        "Search the catalogue before browsing categories",
        "Typing the product name into the shop's search box finds it faster than clicking through category menus.",
    ),
    (
        "Sort search results by price to find the cheapest offer",
        "Use the sort dropdown on the results page and pick price ascending before comparing products.",
    ),
    (
        "Apply the size filter before reading product pages",
        "Filtering the product list by size hides items that are out of stock in the size the user wants.",
    ),
    (
        "Check the shipping cost in the cart before checkout",
        "The product page shows the item price only; the cart shows delivery fees for the user's address.",
    ),
    (
        "Read the return policy before buying clothes online",
        "The store's return page says how many days a customer has to send clothes back.",
    ),
    (
        "Use the order history page to find a past purchase",
        "Sign in, open My Orders, and search the order list for the product the user bought before.",
    ),
    (
        "Compare product reviews by star rating",
        "Open the reviews tab of the product page and sort reviews by rating to see complaints first.",
    ),
    (
        "Add items to the wishlist when the user is undecided",
        "The heart icon on a product card saves it to the wishlist for later purchase.",
    ),
    (
        "Enter the discount code on the cart page",
        "Coupon codes go into the promo code field of the shopping cart, before payment.",
    ),
    (
        "Pick the delivery date at checkout",
        "The checkout page lists delivery slots; choose the one the user asked for before placing the order.",
    ),
    (
        "Check stock availability at a nearby store",
        "The product page has a 'find in store' link that shows which shops have the item in stock.",
    ),
    (
        "Track a parcel from the order details page",
        "Open the order in My Orders and click the tracking link to see where the package is.",
    ),
    (
        "Change the quantity of an item in the shopping cart",
        "Use the plus and minus buttons next to the product in the cart instead of adding it again.",
    ),
    (
        "Filter products by brand on the results page",
        "Tick the brand checkboxes in the left sidebar to narrow the product list to one manufacturer.",
    ),
    (
        "Look for the product's size chart before ordering shoes",
        "The size guide link near the size selector converts EU, US and UK shoe sizes.",
    ),
    (
        "Cancel an order before it ships",
        "In the order details page the cancel button is available until the shop marks the order as shipped.",
    ),
    (
        "Save the delivery address in the account settings",
        "Adding the address to the customer account fills it in automatically at checkout.",
    ),
    (
        "Compare two products side by side",
        "Tick 'compare' on two product cards and open the comparison page to see their specifications.",
    ),
    (
        "Find the cheapest shipping option",
        "At checkout, standard delivery is cheaper than express; choose it unless the user needs the order soon.",
    ),
    (
        "Use the product category menu when search finds nothing",
        "If the shop search returns no results, browse the category menu for the product type instead.",
    ),
    (
        "Check the product's colour options before adding it to the cart",
        "Select the colour swatch on the product page; the cart keeps the colour chosen there.",
    ),
    (
        "Request a refund for a damaged item",
        "Open the order, choose 'return or refund', and pick 'item damaged' as the reason.",
    ),
    (
        "Subscribe to a price drop alert for an expensive product",
        "The product page offers an alert that e-mails the customer when the price falls.",
    ),
    (
        "Verify the seller on a marketplace product page",
        "Marketplace listings name the third-party seller; check its rating before buying.",
    ),
    (
        "Find gift wrapping options at checkout",
        "Gift wrap and a gift message are options on the checkout page, per item in the order.",
    ),
    (
        "Use the store locator to find opening hours",
        "The shop's store locator page lists each store's address and opening hours.",
    ),
    (
        "Check whether a product is eligible for free delivery",
        "Products above the free shipping threshold show a free delivery label in the cart.",
    ),
    (
        "Read the product specifications tab for dimensions",
        "Dimensions and weight of furniture are in the specifications tab, not the description.",
    ),
    (
        "Reorder a previous purchase from the order history",
        "The 'buy again' button in My Orders adds the same products to the cart.",
    ),
    (
        "Check the estimated delivery time on the product page",
        "The product page shows when the order would arrive if placed before the daily cut-off time.",
    ),
]
DESCRIPTION = "Use when shopping online for the user."
ON_TOPIC = (
    "Apply the price filter on the shop's results page",
    DESCRIPTION,
    "Set the minimum and maximum price in the filter sidebar so the product list only shows items in the user's budget.",
)
OFF_TOPIC = (
    "Proof sourdough overnight in the fridge",
    "Use when baking bread at home.",
    "Let the shaped loaf rise for twelve hours at four degrees, then bake it in a preheated Dutch oven at 250 °C.",
)


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


def _bank_of(approved, bank, n):
    return [approved(bank, title, DESCRIPTION, content) for title, content in SHOP[:n]]


@pytest.fixture
def shop(approved, bank):
    """A bank of 30 approved shopping lessons, calibrated (as the worker does)."""
    items = _bank_of(approved, bank, 30)
    bank_anomaly_calibrate(bank=bank)
    return items


def _propose(bank, title, description, content):
    item = propose_item(bank, title=title, description=description, content=content)
    return item, memory_items_risk_scan(items=[item])


def test_an_off_topic_item_is_flagged_with_its_score_on_its_page(shop, bank, client, owner):
    item, found = _propose(bank, *OFF_TOPIC)
    (finding,) = [f for f in found if f.kind == "anomaly"]
    threshold = AnomalyCalibration.objects.get(bank=bank).threshold
    assert finding.detector == ANOMALY_DETECTOR and finding.excerpt == item.title
    assert finding.score > threshold and not finding.confirmed
    # The item page shows the score beside the findings, with the title highlighted.
    client.force_login(owner)
    page = client.get(reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": item.public_id}))
    text = _text(page.content.decode())
    assert (
        f"Unlike the bank: {finding.score:.2f}, threshold {threshold:.2f} (at the bank's 2 % false-flag rate)" in text
    )
    assert f"<mark>{item.title}</mark>" in page.content.decode()


def test_an_on_topic_item_is_not_flagged(shop, bank):
    _item, found = _propose(bank, *ON_TOPIC)
    assert [f for f in found if f.kind == "anomaly"] == []


def test_the_false_flag_rate_on_the_reference_stays_within_the_setting(shop, bank, owner, client):
    for rate in (0.02, 0.1, 0.2):
        bank_trust_policy_update(bank=bank, actor=owner, anomaly_false_flag_rate=rate)
        calibration = bank_anomaly_calibrate(bank=bank)
        above = sum(score > calibration.threshold for score in calibration.scores)
        assert calibration.reference_size == 30 and len(calibration.scores) == 30
        assert above / 30 <= rate
    assert above >= 1  # at 20 % it flags some of the bank's own items: the threshold is not just the maximum
    client.force_login(owner)
    text = _text(client.get(reverse("memories:trust", kwargs={"bank_id": bank.public_id})).content.decode())
    assert "Calibrated on 30 approved items" in text
    assert f"At the 20 % set, it flags {round(above / 30 * 100, 1):g} % of those approved items" in text


def test_a_scan_reads_the_threshold_the_calibration_holds_at_each_rate(shop, bank, owner):
    """The scan reads one stored score in SQL (not the whole list): the same as the calibration's own."""
    calibration = bank_anomaly_calibrate(bank=bank)
    for rate in (0.01, 0.02, 0.05, 0.1, 0.15, 0.2):
        bank_trust_policy_update(bank=bank, actor=owner, anomaly_false_flag_rate=rate)
        assert bank_anomaly_threshold(bank) == pytest.approx(threshold_at(calibration.scores, rate)), rate
    bank_trust_policy_update(bank=bank, actor=owner, anomaly_false_flag_rate=0)
    assert bank_anomaly_threshold(bank) is None


def test_an_edit_away_from_the_bank_stops_serving_an_approved_item(shop, bank, owner):
    item = shop[0]
    memory_item_edit(item=item, author=owner, title=OFF_TOPIC[0], description=OFF_TOPIC[1], content=OFF_TOPIC[2])
    item.refresh_from_db()
    assert RiskFinding.objects.filter(item=item, kind="anomaly", confirmed=False).exists()
    assert item.status == ItemStatus.APPROVED and "Unlike the bank" in item.needs_review_reason


def test_off_means_no_finding(shop, bank, owner):
    bank_trust_policy_update(bank=bank, actor=owner, anomaly_false_flag_rate=0)
    _item, found = _propose(bank, *OFF_TOPIC)
    assert [f for f in found if f.kind == "anomaly"] == []


def test_below_the_minimum_nothing_is_flagged_and_the_trust_page_says_so(approved, bank, client, owner):
    _bank_of(approved, bank, 7)
    calibration = bank_anomaly_calibrate(bank=bank)
    assert calibration.threshold is None and calibration.scores == []
    _item, found = _propose(bank, *OFF_TOPIC)
    assert [f for f in found if f.kind == "anomaly"] == []
    client.force_login(owner)
    text = _text(client.get(reverse("memories:trust", kwargs={"bank_id": bank.public_id})).content.decode())
    assert f"Anomaly score: calibrates once the bank has {MIN_REFERENCE} approved items (it has 7)." in text


def test_a_scan_asks_a_worker_to_calibrate_a_bank_that_reached_the_minimum(
    approved, bank, eager_celery, django_capture_on_commit_callbacks
):
    _bank_of(approved, bank, MIN_REFERENCE)
    assert not AnomalyCalibration.objects.filter(bank=bank).exists()
    with django_capture_on_commit_callbacks(execute=True):
        _item, found = _propose(bank, *ON_TOPIC)  # the first scan after: not calibrated yet, so no finding
    assert [f for f in found if f.kind == "anomaly"] == []
    calibration = AnomalyCalibration.objects.get(bank=bank)  # the worker's task ran
    assert calibration.reference_size == MIN_REFERENCE and calibration.threshold is not None
    _item, found = _propose(bank, *OFF_TOPIC)
    assert [f.kind for f in found] == ["anomaly"]


def test_beat_recalibrates_only_stale_banks_with_the_score_on(approved, bank, other_bank, owner):
    _bank_of(approved, bank, MIN_REFERENCE)
    _bank_of(approved, other_bank, MIN_REFERENCE)
    bank_trust_policy_update(bank=other_bank, actor=owner, anomaly_false_flag_rate=0)
    assert banks_anomaly_recalibrate() == 1  # ours: never calibrated; the other has the score off
    assert AnomalyCalibration.objects.get(bank=bank).reference_size == MIN_REFERENCE
    assert not AnomalyCalibration.objects.filter(bank=other_bank).exists()
    assert banks_anomaly_recalibrate() == 0  # nothing changed since
    approved(bank, *ON_TOPIC)
    approved(bank, "Check the size of a parcel before choosing a locker", DESCRIPTION, "Lockers take small parcels.")
    assert banks_anomaly_recalibrate() == 0  # 2 more of 20: within 10 %
    approved(bank, "Check the warranty period on electronics", DESCRIPTION, "The warranty is in the product details.")
    assert banks_anomaly_recalibrate() == 1  # 3 more: past 10 %
    assert AnomalyCalibration.objects.get(bank=bank).reference_size == MIN_REFERENCE + 3


@pytest.mark.parametrize("value", ["25", "-1", "abc", "nan"])
def test_the_form_refuses_a_rate_out_of_bounds(client, bank, owner, value):
    client.force_login(owner)
    response = client.post(
        reverse("memories:trust", kwargs={"bank_id": bank.public_id}),
        {"min_tier": 0, "audit_percent": 10, "anomaly_percent": value},
    )
    assert response.status_code == 200  # the page again, with the error
    text = _text(response.content.decode())
    assert re.search(r"less than or equal to 20|greater than or equal to 0|Enter a number", text)
    assert not TrustPolicy.objects.filter(bank=bank).exists()


def test_the_form_saves_the_rate_in_percent(client, bank, owner):
    client.force_login(owner)
    url = reverse("memories:trust", kwargs={"bank_id": bank.public_id})
    assert client.post(url, {"min_tier": 0, "audit_percent": 10, "anomaly_percent": "5"}).status_code == 302
    assert TrustPolicy.objects.get(bank=bank).anomaly_false_flag_rate == 0.05
    assert 'name="anomaly_percent" value="5.0"' in client.get(url).content.decode()


@pytest.mark.parametrize("value", [0.5, -0.01])
def test_the_service_refuses_a_rate_out_of_bounds(bank, owner, value):
    with pytest.raises(Invalid, match="anomaly_false_flag_rate"):
        bank_trust_policy_update(bank=bank, actor=owner, anomaly_false_flag_rate=value)
    assert not MemoryItem.objects.filter(bank=bank).exists()
    assert TrustPolicy.objects.filter(bank=bank, anomaly_false_flag_rate=value).count() == 0
