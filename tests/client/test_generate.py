"""The committed builders module is what the generator makes of the manifest (CI fails on drift)."""

from __future__ import annotations

import json

import pytest

from emailops.client import generate


def test_committed_module_matches_the_manifest():
    expected = generate.render(generate.load_manifest())
    assert generate.OUTPUT.read_text(encoding="utf-8") == expected, (
        "emailops/client/messages.py is out of date: run python -m emailops.client.generate"
    )


def test_check_flags_a_manifest_change(tmp_path, capsys):
    manifest = generate.load_manifest()
    manifest["account-locked"] = ["unlockLink", "userName"]
    path = tmp_path / "template-variables.json"
    path.write_text(json.dumps(manifest))
    assert generate.main(["--manifest", str(path), "--check"]) == 1
    assert "out of date" in capsys.readouterr().out


def test_generated_builder_for_a_new_message(tmp_path):
    path, output = tmp_path / "manifest.json", tmp_path / "messages.py"
    path.write_text(json.dumps({"account-locked": ["unlockLink", "userName", "AWSRegion"]}))
    assert generate.main(["--manifest", str(path), "--output", str(output)]) == 0
    source = output.read_text()
    assert "def account_locked(" in source
    assert "unlock_link: str" in source and "aws_region: str" in source
    assert "'unlockLink': unlock_link" in source or '"unlockLink": unlock_link' in source


@pytest.mark.parametrize(
    ("name", "snake"),
    [
        ("datasetName", "dataset_name"),
        ("AppURL", "app_url"),
        ("DatasetVersionID", "dataset_version_id"),
        ("AWSRegion", "aws_region"),
        ("WelcomeWorkspaceNodeId", "welcome_workspace_node_id"),
        ("dataset-publication-accepted", "dataset_publication_accepted"),
        ("class", "class_"),
    ],
)
def test_snake_case(name, snake):
    assert generate.snake_case(name) == snake


def test_colliding_variables_are_refused():
    with pytest.raises(ValueError, match="collide"):
        generate.render({"x": ["datasetName", "dataset_name"]})
