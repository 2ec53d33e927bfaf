"""`manage.py rb_export_skills`: the approved bank as files for CI pipelines,
written to disk (the skill folder, its zip, an AGENTS.md section replaced in place)."""

from __future__ import annotations

import io
import zipfile

import pytest
import yaml
from django.core.management import CommandError, call_command

from accounts.teams.banks import bank_update_settings
from memories.items.services import memory_item_create
from memories.review.decisions import memory_item_archive
from tests import factories


def approved(bank, owner, title):
    return memory_item_create(
        bank=bank, title=title, description="When it applies.", content="What to do.", author=owner, status="approved"
    )


def run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("rb_export_skills", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_skill_folder_is_written_under_the_skills_directory(bank, owner, tmp_path):
    approved(bank, owner, "Prefer the official source")
    _out, err = run("--bank", "acme/web-agents", "--format", "skill", "--out", str(tmp_path / "skills"))
    path = tmp_path / "skills" / "web-agents" / "SKILL.md"
    text = path.read_text()
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["name"] == "web-agents" and meta["metadata"]["lessons"] == "1"
    assert f"{path}: written" in err and meta["metadata"]["version"] in err
    # Nothing new approved: the file is left as it is, though the export time moved on.
    assert f"{path}: unchanged" in run("--bank", "web-agents", "--out", str(tmp_path / "skills"))[1]
    assert path.read_text() == text
    explicit = tmp_path / "elsewhere" / "SKILL.md"
    run("--bank", "web-agents", "--name", "team-lessons", "--out", str(explicit))
    assert yaml.safe_load(explicit.read_text().split("---\n")[1])["name"] == "team-lessons"


def test_zip_holds_the_folder_and_stdout_gets_the_markdown(bank, owner, tmp_path):
    approved(bank, owner, "Prefer the official source")
    run("--bank", "web-agents", "--format", "zip", "--out", str(tmp_path / "lessons.zip"))
    with zipfile.ZipFile(tmp_path / "lessons.zip") as archive:
        assert archive.namelist() == ["web-agents/SKILL.md"]
    out, _err = run("--bank", "web-agents", "--format", "agents")
    assert out.startswith("<!-- reasoningbank:begin acme/web-agents -->") and "Prefer the official source" in out


def test_agents_section_is_replaced_in_an_existing_file_and_the_rest_kept(bank, owner, tmp_path):
    bank_update_settings(
        bank=bank, actor=None, duplicate_threshold=1.0
    )  # near-identical lessons, kept apart on purpose
    bank.refresh_from_db()
    first = approved(bank, owner, "First lesson")
    agents = tmp_path / "AGENTS.md"
    agents.write_text("# Agents\n\nBuild with `make`.\n")
    run("--bank", "web-agents", "--format", "agents", "--out", str(agents))
    once = agents.read_text()
    assert once.startswith("# Agents\n\nBuild with `make`.\n\n<!-- reasoningbank:begin acme/web-agents -->\n")
    agents.write_text(once + "\n## Style\n\nTabs, not spaces.\n")
    approved(bank, owner, "Second lesson")
    memory_item_archive(item=first, author=owner)
    run("--bank", "web-agents", "--format", "agents", "--out", str(agents))
    text = agents.read_text()
    assert text.startswith("# Agents\n\nBuild with `make`.\n\n<!-- reasoningbank:begin")
    assert text.endswith("<!-- reasoningbank:end acme/web-agents -->\n\n## Style\n\nTabs, not spaces.\n")
    assert "Second lesson" in text and "First lesson" not in text
    assert text.count("reasoningbank:begin acme/web-agents") == 1
    # A new file is created with just the section.
    run("--bank", "web-agents", "--format", "agents", "--out", str(tmp_path / "new" / "CLAUDE.md"))
    assert (tmp_path / "new" / "CLAUDE.md").read_text().startswith("<!-- reasoningbank:begin acme/web-agents -->")


def test_bad_input_is_a_clear_error(bank, owner, tmp_path):
    factories.make_bank(team=factories.make_team(), slug="web-agents")
    with pytest.raises(CommandError, match="No bank 'acme/nope'"):
        run("--bank", "acme/nope")
    with pytest.raises(CommandError, match="Several teams have a bank 'web-agents'"):
        run("--bank", "web-agents")
    with pytest.raises(CommandError, match="a skill name is 1-64"):
        run("--bank", "acme/web-agents", "--name", "Bad Name")
    broken = tmp_path / "AGENTS.md"
    broken.write_text("# Agents\n<!-- reasoningbank:begin acme/web-agents -->\nhand edited\n")
    with pytest.raises(CommandError, match="no '<!-- reasoningbank:end acme/web-agents -->' after it"):
        run("--bank", "acme/web-agents", "--format", "agents", "--out", str(broken))
    assert broken.read_text() == "# Agents\n<!-- reasoningbank:begin acme/web-agents -->\nhand edited\n"
    with pytest.raises(CommandError, match="Cannot write"):
        run("--bank", "acme/web-agents", "--format", "zip", "--out", str(broken / "x.zip"))
    with pytest.raises(CommandError):
        run("--bank", "acme/web-agents", "--format", "pdf")
    _out, err = run("--bank", "acme/web-agents", "--out", str(tmp_path))
    assert "no approved lessons yet" in err
