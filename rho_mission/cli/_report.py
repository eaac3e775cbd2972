"""``rho mission report``: a mission's page as one static HTML file, for CI artefacts and sharing.

``_main`` adds this command to the ``rho mission`` group (none joins it by being imported).

Decision: docs/decisions/0801-serve.md
"""

from __future__ import annotations

from pathlib import Path

import click

from ._errors import CliError

__all__ = ["report"]


@click.command("report")
@click.argument("name", metavar="MISSION")
@click.option(
    "--html",
    "html_file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report to this file (replaced if it exists).",
)
@click.option(
    "--include-text",
    is_flag=True,
    help="Also put in the prompt, descriptions, commands, errors and failed tasks' log tails.",
)
def report(name: str, html_file: Path, include_text: bool) -> None:
    """Write the page of a mission (waves, cards, timeline, failures) as one HTML file.

    MISSION is a folder, a mission id, a unique prefix of one, or 'latest'. The file needs
    nothing else to open (no network). By default it holds ids, statuses, times, counts and
    join summaries only: no prompt, description, command, file name, path or log line, and no
    error text beyond rho's own ('command failed: exit code 1'). --include-text adds them.

    Example: rho mission report latest --html mission-report.html
    """
    from rho_mission import Mission
    from taskstore import write_atomic

    from ..serve._report import report_html
    from ._mission_names import mission_folder

    folder = mission_folder(name)
    target = Mission.load(folder)
    html = report_html(target, folder, include_text=include_text)
    try:
        # A report with text may hold prompts and output: readable by its owner only.
        write_atomic(html_file, html.encode(), mode=0o600 if include_text else 0o644)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise CliError(f"cannot write {html_file}: {reason}") from None
    click.echo(f"report of mission {target.id} ({target.status}) written to {html_file}")
    if target.status in ("planning", "executing"):
        click.echo(f"note: mission {target.id} is {target.status}: the report shows it as of now")
    if not include_text:
        click.echo(
            "it holds no prompt, description, command or log text (--include-text adds them)"
        )
