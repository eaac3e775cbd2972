"""The plan format (``rho.plan/v1``): read, checked by the store's rules, documented as it is."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from taskstore import (
    FieldLimitError,
    InvalidPlanError,
    PlanDocument,
    ScheduleError,
    Task,
    TaskStore,
    check_plan,
    plan_tasks,
    read_plan,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "planning.md"


def _blocks(doc: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", doc, flags=re.MULTILINE | re.DOTALL)


def test_the_documented_schema_is_the_models_and_the_example_is_valid() -> None:
    doc = DOC.read_text(encoding="utf-8")
    example, schema = _blocks(doc, "json")
    assert json.loads(schema) == PlanDocument.model_json_schema()
    plan = read_plan(example, "the example")
    tasks, schedule = check_plan(plan)
    assert schedule.waves == [["hello"], ["bye"]]
    assert [t.command for t in tasks] == ["echo hello > hello.txt", plan.features[1].command]


def test_a_plans_features_become_pending_tasks_with_their_blockers() -> None:
    plan = PlanDocument.model_validate(
        {
            "prd": "p",
            "features": [
                {"id": "a", "subject": "A"},
                {"id": "b", "subject": "B", "blockers": ["a"]},
            ],
        }
    )
    a, b = plan_tasks(plan)
    assert (a.status, a.metadata, a.blocker_ids) == ("pending", {}, [])
    assert b.blocker_ids == ["a"]
    assert not plan.plain


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"\xff", "is not JSON"),
        (b"[]", "invalid plan x: document"),
        (b'{"prd": "p"}', "features: field required"),
        (b'{"prd": "p", "features": [{"id": "a"}]}', "features.0.subject: field required"),
        (b'{"prd": 1, "features": []}', "prd: input should be a valid string"),
        (b"[" * 100_000, "nested too deeply"),
    ],
)
def test_a_bad_document_names_its_first_problem(data: bytes, words: str) -> None:
    with pytest.raises(InvalidPlanError) as raised:
        read_plan(data, "x")
    assert words in str(raised.value)


def test_a_plan_breaks_the_limits_with_the_stores_words(tmp_path: Path) -> None:
    long = "s" * 501
    plan = PlanDocument.model_validate({"prd": "p", "features": [{"id": "a", "subject": long}]})
    with pytest.raises(FieldLimitError) as from_plan:
        plan_tasks(plan)
    store = TaskStore(tmp_path / "tasks.json")
    with pytest.raises(FieldLimitError) as from_store:  # what "rho task import" says of it
        store.import_tasks([Task(id="a", subject=long, status="pending")])
    assert str(from_plan.value) == str(from_store.value)
    assert str(from_plan.value) == 'task "a" subject is 501 characters; the limit is 500'


def test_a_cycle_is_the_schedulers_error() -> None:
    features = [
        {"id": "a", "subject": "A", "blockers": ["b"]},
        {"id": "b", "subject": "B", "blockers": ["a"]},
    ]
    with pytest.raises(ScheduleError, match="cycle"):
        check_plan(PlanDocument.model_validate({"prd": "p", "features": features}))
