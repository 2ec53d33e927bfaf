"""The task-set pages: list, build from a previewed filter, upload with its errors shown, one set, delete."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.factories import make_trajectory, record_verdict
from trajectories.evaluation import tasksets
from trajectories.evaluation.models import EvalRun, EvalTask, TaskSet
from trajectories.models import JudgmentSource

pytestmark = pytest.mark.django_db


def url(bank, name="task_sets", **kwargs):
    return reverse(f"trajectories:{name}", kwargs={"bank_id": bank.public_id, **kwargs})


def reviewed(bank, owner, task, label="success", **data):
    trajectory = make_trajectory(bank, task=task, status="done", **data)
    record_verdict(trajectory, label, source=JudgmentSource.HUMAN, author=owner)
    return trajectory


def jsonl_file(*records, name="tasks.jsonl"):
    body = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records).encode()
    return SimpleUploadedFile(name, body, content_type="application/x-ndjson")


FILTER = {"name": "smoke", "description": "", "outcome": "", "agent": "", "text": "", "limit": "50"}


def test_the_preview_counts_what_the_filter_selects_before_saving(client, bank, owner):
    reviewed(bank, owner, "Book a table", agent="web-agent")
    reviewed(bank, owner, "Cancel my order", "failure", agent="web-agent")
    client.force_login(owner)
    fragment = client.get(
        url(bank) + "?preview=1&outcome=failure&limit=50", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="task-set-preview"
    )
    html = fragment.content.decode()
    assert fragment.status_code == 200 and "<h1>" not in html
    assert "data-preview-count>1</strong>" in html and "Cancel my order" in html and "Book a table" not in html
    page = client.post(url(bank), {**FILTER, "action": "preview"}).content.decode()  # without JavaScript
    assert "data-preview-count>2</strong>" in page
    assert not TaskSet.objects.exists()


def test_building_a_set_saves_it_and_opens_its_page_with_source_links(client, bank, owner):
    trajectory = reviewed(bank, owner, "Book a table", task_id="book-1")
    client.force_login(owner)
    response = client.post(url(bank), {**FILTER, "action": "create"})
    task_set = TaskSet.objects.get()
    assert response.status_code == 302 and response["Location"] == url(
        bank, "task_set_detail", task_set_id=task_set.public_id
    )
    page = client.get(response["Location"]).content.decode()
    assert "Book a table" in page and "book-1" in page
    assert (
        reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id})
        in page
    )
    listing = client.get(url(bank)).content.decode()
    assert "smoke" in listing and task_set.get_source_display() in listing


def test_an_empty_selection_or_a_taken_name_is_shown_in_the_form(client, bank, owner):
    client.force_login(owner)
    page = client.post(url(bank), {**FILTER, "action": "create"}).content.decode()
    assert "selects no task" in page and not TaskSet.objects.exists()
    reviewed(bank, owner, "Book a table")
    tasksets.task_set_from_trajectories(bank=bank, name="smoke", filters={})
    page = client.post(url(bank), {**FILTER, "action": "create"}).content.decode()
    assert "has a task set named" in page and TaskSet.objects.count() == 1


def test_an_upload_with_bad_lines_shows_every_one_and_saves_nothing(client, bank, owner):
    client.force_login(owner)
    bad = jsonl_file(
        {"id": "a", "task": "x"},
        {"id": "a", "task": "y"},
        {"id": "b", "task": "z", "check": {"type": "regex", "value": "(["}},
    )
    page = client.post(url(bank), {"action": "upload", "upload-name": "quiz", "upload-file": bad}).content.decode()
    assert "Nothing was saved" in page and "line 2: duplicate id" in page and "line 3:" in page
    assert not TaskSet.objects.exists() and not EvalTask.objects.exists()
    good = jsonl_file({"id": "q1", "task": "What is 2+2?", "check": {"type": "equals", "value": "4"}})
    response = client.post(url(bank), {"action": "upload", "upload-name": "quiz", "upload-file": good})
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "What is 2+2?" in page and "equals" in page and "uploaded" in page


def test_delete_is_refused_while_a_run_uses_it(client, bank, owner):
    client.force_login(owner)
    used = tasksets.task_set_upload(bank=bank, name="used", body=b'{"id": "a", "task": "t"}')
    EvalRun.objects.create(bank=bank, task_set=used, k=1)
    response = client.post(url(bank, "task_set_delete", task_set_id=used.public_id), follow=True)
    assert "uses this task set" in response.content.decode() and TaskSet.objects.filter(pk=used.pk).exists()
    free = tasksets.task_set_upload(bank=bank, name="free", body=b'{"id": "a", "task": "t"}')
    response = client.post(url(bank, "task_set_delete", task_set_id=free.public_id))
    assert response.status_code == 302 and not TaskSet.objects.filter(pk=free.pk).exists()


def test_a_viewer_reads_but_neither_builds_nor_deletes(client, bank, owner, viewer):
    task_set = tasksets.task_set_upload(bank=bank, name="quiz", body=b'{"id": "a", "task": "t"}')
    client.force_login(viewer)
    page = client.get(url(bank)).content.decode()
    assert "quiz" in page and 'value="create"' not in page and 'value="upload"' not in page
    assert client.get(url(bank, "task_set_detail", task_set_id=task_set.public_id)).status_code == 200
    assert client.post(url(bank), {**FILTER, "action": "create"}).status_code == 403
    upload = jsonl_file({"id": "b", "task": "t"})
    assert client.post(url(bank), {"action": "upload", "upload-name": "x", "upload-file": upload}).status_code == 403
    assert client.post(url(bank, "task_set_delete", task_set_id=task_set.public_id)).status_code == 403
    assert list(TaskSet.objects.values_list("name", flat=True)) == ["quiz"]


def test_another_teams_set_is_404_and_anonymous_goes_to_login(client, bank, other_bank, owner, stranger):
    theirs = tasksets.task_set_upload(bank=other_bank, name="theirs", body=b'{"id": "a", "task": "t"}')
    client.force_login(owner)
    assert client.get(url(bank, "task_set_detail", task_set_id=theirs.public_id)).status_code == 404
    assert client.post(url(bank, "task_set_delete", task_set_id=theirs.public_id)).status_code == 404
    assert "theirs" not in client.get(url(bank)).content.decode()
    client.force_login(stranger)
    assert client.get(url(bank)).status_code == 404
    client.logout()
    assert client.get(url(bank)).status_code == 302
    assert TaskSet.objects.filter(pk=theirs.pk).exists()


def test_the_list_reads_a_fixed_number_of_queries(client, bank, owner, django_assert_max_num_queries):
    for i in range(5):
        tasksets.task_set_upload(bank=bank, name=f"set {i}", body=b'{"id": "a", "task": "t"}', actor=owner)
    client.force_login(owner)
    with django_assert_max_num_queries(12):
        assert client.get(url(bank)).status_code == 200
