"""A build's step images: the owner labels a build adds to a Dockerfile (one LABEL right
after each FROM, so every step image names the run that is building it, and no reaper
takes a live build's step for a dead run's leftover)."""

from __future__ import annotations

from cligym.runtime.images import labelled

LABELS = {"cligym": "1", "cligym.pid": "42"}
LINE = 'LABEL cligym="1" cligym.pid="42"'


def test_the_labels_follow_the_from_line():
    text = "FROM base:1\nRUN true\nWORKDIR /testbed\n"
    assert labelled(text, LABELS) == f"FROM base:1\n{LINE}\nRUN true\nWORKDIR /testbed\n"


def test_each_stage_of_a_multi_stage_build_gets_them():
    text = "ARG V=1\nFROM base AS build\nRUN make\n\nfrom base\nCOPY --from=build /a /a\n"
    lines = labelled(text, LABELS).splitlines()
    assert lines == ["ARG V=1", "FROM base AS build", LINE, "RUN make", "",
                     "from base", LINE, "COPY --from=build /a /a"]


def test_a_from_split_over_lines_gets_them_after_its_last_line():
    text = "FROM \\\n  # the image\n  base:1 \\\n  AS one\nRUN true"
    assert labelled(text, LABELS).splitlines() == ["FROM \\", "  # the image", "  base:1 \\", "  AS one",
                                                   LINE, "RUN true"]


def test_a_run_that_mentions_from_is_not_a_stage():
    text = "FROM base\nRUN echo \\\nFROM x\n# FROM y\nRUN true\n"
    assert labelled(text, LABELS).count("LABEL") == 1


def test_an_escape_directive_is_followed():
    text = "# escape=`\nFROM base `\n  AS one\nRUN echo \\\n"
    assert labelled(text, LABELS).splitlines() == ["# escape=`", "FROM base `", "  AS one", LINE, "RUN echo \\"]


def test_a_broken_state_builds_its_runs_of_run_lines_as_one():
    """joined_runs: consecutive plain RUN lines become one exec-form RUN of /bin/sh, each
    line in its own subshell after the one before succeeded; other lines split the runs; a
    flagged or exec-form RUN stays apart; a ΔD that sets SHELL is left whole."""
    import json

    from cligym.harness.images import joined_runs

    lines = ["RUN a # note", "run b && c", "ENV X=1", "RUN d", "RUN --network=none e", 'RUN ["f"]', "RUN g"]
    joined = joined_runs(lines)
    assert joined[1:] == ["ENV X=1", "RUN d", "RUN --network=none e", 'RUN ["f"]', "RUN g"]
    head, _, form = joined[0].partition(" ")
    assert head == "RUN" and json.loads(form) == ["/bin/sh", "-c", "(\na # note\n) && (\nb && c\n)"]
    assert joined_runs(['SHELL ["/bin/bash", "-c"]', "RUN a", "RUN b"]) == \
        ['SHELL ["/bin/bash", "-c"]', "RUN a", "RUN b"]
    assert joined_runs(["RUN a"]) == ["RUN a"] and joined_runs([]) == []
