"""The one table of the hot commands (``rho task ready|waves|list|show|add|update``, ``rho
mission show|list``): each one's argument, options and body, which both lanes read.

The full CLI makes its click commands from it (``_hotclick``); the quick lane parses the plain
spellings of the same options (``_quick._argv``; an option not ``light`` leaves the command to
click) and calls the same bodies (``_hotbodies``) over its own data source. An option's
``kind`` names its type; each lane turns it into its own reader (``_hotclick.CLICK_TYPES``,
``_quick._argv._READERS``), and a test compares the two lanes' options, so they cannot drift.
Standard library only: the quick lane imports this.

Decision: docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import _hotbodies

__all__ = ["HOT_COMMANDS", "Argument", "Command", "Option", "hot_command"]

# A body takes its lane's source: a ``Source`` of the store, or a ``MissionSource``.
Body = Callable[[Any, Mapping[str, Any]], "str | None"]


# Plain classes with slots, not NamedTuples: a NamedTuple class costs the quick lane about
# half a millisecond to make, on every process.
class Option:
    """One option of a hot command."""

    __slots__ = (
        "default",
        "dest",
        "help",
        "kind",
        "light",
        "metavar",
        "multiple",
        "name",
        "show_default",
    )

    def __init__(
        self,
        name: str,  # as typed: ``--priority``
        dest: str,  # the body's key (the store's keyword, where the value goes to the store)
        # flag | text | priority (0..4) | status (one of STATUSES) | sort (id or priority) |
        # path | diagram (table, mermaid or dot)
        kind: str,
        help: str | None = None,
        multiple: bool = False,
        default: Any = None,
        metavar: str | None = None,
        show_default: bool = False,
        light: bool = True,  # the quick lane answers with it; else it leaves it to click
    ) -> None:
        self.name, self.dest, self.kind, self.help = name, dest, kind, help
        self.multiple, self.default, self.metavar = multiple, default, metavar
        self.show_default, self.light = show_default, light


class Argument:
    """The one argument of a hot command."""

    __slots__ = ("dest", "metavar")

    def __init__(self, dest: str, metavar: str | None = None) -> None:
        self.dest, self.metavar = dest, metavar


class Command:
    """A hot command: what it takes, whether it writes the store, and its body."""

    __slots__ = ("argument", "body", "help", "name", "noun", "options", "writes")

    def __init__(
        self,
        noun: str,
        name: str,
        help: str,
        argument: Argument | None,
        options: tuple[Option, ...],
        body: Body,
        writes: bool = False,
    ) -> None:
        self.noun, self.name, self.help, self.argument = noun, name, help, argument
        self.options, self.body, self.writes = options, body, writes


STORE = Option(
    "--store", "store_path", "path", "Task store file (overrides rho --store and $RHO_TASK_STORE)."
)
JSON = Option("--json", "as_json", "flag", "Print one JSON document.", default=False)
_LABEL_HELP = "Add a label (repeatable)."
_PRIORITY_HELP = "0 (highest) to 4; a new task gets 2."


def _triage(labels_dest: str) -> tuple[Option, ...]:
    labels = Option("--label", labels_dest, "text", _LABEL_HELP, True, (), "NAME")
    return (Option("--priority", "priority", "priority", _PRIORITY_HELP), labels)


_COMMAND = Option("--command", "command", "text", "Shell command a mission runs.")

HOT_COMMANDS: tuple[Command, ...] = (
    Command(
        "task",
        "add",
        """Add a pending task and print its id.

    Example: rho task add "Write tests" --blocked-by task_1 --priority 1 --label tests
    """,
        Argument("subject"),
        (
            Option("--description", "description", "text", "Longer text: what done looks like.",
                   default=""),
            Option("--blocked-by", "blocked_by", "text",
                   "A task that must finish first (repeatable, or comma-separated).", True,
                   (), "ID"),
            Option("--related", "related", "text",
                   "A related task, no scheduling (repeatable, or comma-separated).", True, (),
                   "ID"),
            Option("--parent", "parent", "text", "Make this a subtask of ID.", metavar="ID"),
            _COMMAND,
            *_triage("labels"),
            STORE,
            JSON,
        ),
        _hotbodies.add,
        writes=True,
    ),
    Command(
        "task",
        "list",
        """List tasks: id, status, priority, subject and blockers.

    Example: rho task list --status pending --label backend --priority 1
    """,
        None,
        (
            Option("--status", "statuses", "status",
                   "Only tasks with this status (repeat for any of several).", True, ()),
            Option("--label", "labels", "text",
                   "Only tasks with this label (repeated: tasks with all of them).", True, (),
                   "NAME"),
            Option("--priority", "priority", "priority", "Only tasks of this priority."),
            Option("--wide", "wide", "flag", "Add the labels and command columns.", default=False),
            STORE,
            JSON,
        ),
        _hotbodies.list_,
    ),
    Command(
        "task",
        "show",
        """Show one task.

    Example: rho task show task_3
    """,
        Argument("task_id", "ID"),
        (STORE, JSON),
        _hotbodies.show,
    ),
    Command(
        "task",
        "update",
        """Change a task; new blockers that are missing or close a cycle are refused.

    Example: rho task update task_2 --status completed --priority 0 --remove-label later
    """,
        Argument("task_id", "ID"),
        (
            Option("--status", "status", "text", "pending, in_progress, completed, failed, ..."),
            Option("--subject", "subject", "text"),
            Option("--description", "description", "text"),
            Option("--add-blocker", "add_blockers", "text", None, True, (), "ID"),
            Option("--remove-blocker", "remove_blockers", "text", None, True, (), "ID"),
            Option("--add-related", "add_related", "text", None, True, (), "ID"),
            _COMMAND,
            *_triage("add_labels"),
            Option("--remove-label", "remove_labels", "text", "Remove a label (repeatable).",
                   True, (), "NAME"),
            STORE,
            JSON,
        ),
        _hotbodies.update,
        writes=True,
    ),
    Command(
        "task",
        "ready",
        """List pending tasks whose every blocker is completed, with the waves.

    Example: rho task ready --json --sort priority
    """,
        None,
        (
            Option("--sort", "sort", "sort",
                   "Order of the ready tasks: by id, or by priority then id.", default="id",
                   show_default=True),
            STORE,
            JSON,
        ),
        _hotbodies.ready,
    ),
    Command(
        "task",
        "waves",
        """Show the waves still to run: the tasks not completed, in the topological waves a
    mission would run them (the JSON's "waves" hold every task, "to_run" those).

    Example: rho task waves --json
    """,
        None,
        (STORE, JSON),
        _hotbodies.waves,
    ),
    Command(
        "mission",
        "show",
        """Show a mission's waves, features, joins, branches, timings and where each log is.

    MISSION is a folder, a mission id, a unique prefix of one, or 'latest'.

    Example: rho mission show latest --format mermaid
    """,
        Argument("name", "MISSION"),
        (
            Option("--json", "as_json", "flag", "Print mission.json, with its integration counts.",
                   default=False, light=False),
            Option("--format", "fmt", "diagram",
                   "A diagram for people, grouped by wave (mermaid or dot), instead of the tables.",
                   default="table", show_default=True, light=False),
        ),
        _hotbodies.mission_show,
    ),
    Command(
        "mission",
        "list",
        """List the missions of this repository, newest first.

    Example: rho mission list
    """,
        None,
        (JSON,),
        _hotbodies.mission_list,
    ),
)  # fmt: skip


def hot_command(noun: str, name: str) -> Command | None:
    """The table's entry of ``rho NOUN NAME``, or None."""
    return next((c for c in HOT_COMMANDS if (c.noun, c.name) == (noun, name)), None)
