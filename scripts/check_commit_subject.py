#!/usr/bin/env python3
"""The commit-msg hook (.pre-commit-config.yaml, stage commit-msg): a commit's subject is one line of at most
72 characters, then a blank line before the body (docs/testing.md, "Habits"). Git's own comment lines
(``#``) and a trailing scissors section are not part of the message.

Usage: check_commit_subject.py <message file>   (what git passes a commit-msg hook)
"""

import sys

MAX_SUBJECT = 72
SCISSORS = "# ------------------------ >8 ------------------------"


def problems(message):
    """What is wrong with a commit message (an empty list when nothing is)."""
    lines = []
    for line in message.splitlines():
        if line.startswith(SCISSORS):
            break
        if not line.startswith("#"):
            lines.append(line.rstrip())
    while lines and not lines[0]:
        lines.pop(0)
    if not lines:
        return ["the message is empty"]
    out = []
    subject = lines[0]
    if len(subject) > MAX_SUBJECT:
        out.append(
            f"the subject is {len(subject)} characters (at most {MAX_SUBJECT}; the detail goes in the body after a blank line): {subject[:MAX_SUBJECT]}..."
        )
    if len(lines) > 1 and lines[1]:
        out.append("the second line is not blank (subject, blank line, body)")
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        found = problems(f.read())
    for p in found:
        print(f"commit message: {p}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
