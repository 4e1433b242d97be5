"""The Simplified Chinese catalogue: every entry translated, one word for job, one register.

Also the labels that come from elsewhere (django-axes' admin, models without a
translated name, placeholders) read in Chinese.
"""

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.apps import apps
from django.utils import translation

CATALOGUE = Path(__file__).resolve().parent.parent / "locale/zh_Hans/LC_MESSAGES/django.po"
# English words; acronyms (GPU, API) and names (Slurm) are not words to translate.
WORDS = re.compile(r"[A-Za-z]{3,}")
NAMES = {"Slurm"}


def english(text) -> list[str]:
    return [w for w in WORDS.findall(str(text)) if not w.isupper() and w not in NAMES]


def entries(catalogue: Path = CATALOGUE) -> list[dict]:
    """The catalogue's entries: flags, msgid and every msgstr, joined from their lines."""
    found = []
    for block in catalogue.read_text().split("\n\n"):
        entry: dict = {"flags": "", "msgid": None, "msgstr": []}
        key = None
        for line in block.splitlines():
            if line.startswith("#,"):
                entry["flags"] += line
            elif line.startswith("#"):
                continue
            elif line.startswith(("msgid ", "msgid_plural ", "msgstr")):
                key, _sep, text = line.partition(" ")
                if key.startswith("msgstr"):
                    entry["msgstr"].append("")
                elif key == "msgid":
                    entry["msgid"] = ""
                _append(entry, key, text)
            elif line.startswith('"') and key:
                _append(entry, key, line)
        if entry["msgid"]:  # the header's msgid is empty
            found.append(entry)
    return found


def _append(entry: dict, key: str, quoted: str) -> None:
    text = quoted.strip()[1:-1]
    if key == "msgid":
        entry["msgid"] += text
    elif key.startswith("msgstr"):
        entry["msgstr"][-1] += text


def test_every_msgid_has_a_translation_that_is_not_fuzzy():
    missing = [e["msgid"] for e in entries() if not all(e["msgstr"]) or not e["msgstr"]]
    fuzzy = [e["msgid"] for e in entries() if "fuzzy" in e["flags"]]
    assert missing == [] and fuzzy == []


def test_one_word_for_job_and_the_polite_register():
    wrong = [
        (e["msgid"], text)
        for e in entries()
        for text in e["msgstr"]
        if "作业" in text or "你" in text
    ]
    assert wrong == []


@pytest.mark.parametrize(
    "app_label", ["axes", "resources", "jobs", "billing", "notifications", "auth"]
)
def test_model_names_are_chinese_in_the_admin(app_label):
    with translation.override("zh-hans"):
        untranslated = [
            str(name)
            for model in apps.get_app_config(app_label).get_models()
            for name in (model._meta.verbose_name, model._meta.verbose_name_plural)
            if english(name)
        ]
        untranslated += [
            f"{model.__name__}.{field.name}: {field.verbose_name}"
            for model in apps.get_app_config(app_label).get_models()
            for field in model._meta.fields
            if app_label == "axes" and english(field.verbose_name)
        ]
    assert untranslated == []


def test_placeholders_and_stored_words_read_in_chinese():
    from jobs.environment import unknown_value

    with translation.override("zh-hans"):
        assert english(unknown_value()) == []


GETTEXT_CALLS = {"_", "gettext", "gettext_lazy", "ngettext", "ngettext_lazy", "gettext_noop"}
SKIPPED_FOLDERS = {".venv", "node_modules", "migrations", "tests", "bench"}
TEMPLATE_TRANSLATE = re.compile(r'{%\s*(?:translate|trans)\s+"([^"]*)"')


def source_msgids() -> list[tuple[str, str]]:
    """(where, msgid) of every literal the code and templates mark for translation."""
    root = CATALOGUE.parents[3]
    found = []
    for path in sorted(root.glob("**/*.py")):
        if SKIPPED_FOLDERS & set(path.relative_to(root).parts):
            continue
        found += [
            (f"{path.relative_to(root)}:{line}", msgid) for line, msgid in gettext_literals(path)
        ]
    for path in sorted(root.glob("**/templates/**/*.html")):
        if SKIPPED_FOLDERS & set(path.relative_to(root).parts):
            continue
        found += [
            (str(path.relative_to(root)), m) for m in TEMPLATE_TRANSLATE.findall(path.read_text())
        ]
    return found


def gettext_literals(path: Path) -> list[tuple[int, str]]:
    """(line, msgid) of every literal this Python file marks for translation."""
    return [
        (node.lineno, node.args[0].value)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in GETTEXT_CALLS
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ]


def test_every_label_of_the_axes_admin_reads_in_chinese():
    """django-axes ships no Chinese, and its admin has labels of its own beside its models'
    (a filter's title, fieldsets, an action, the attempts left): staff read them all in
    Chinese from this project's catalogue (``trainyard/third_party_messages.py``)."""
    import axes

    folder = Path(axes.__file__).parent
    with translation.override("zh-hans"):
        untranslated = [
            f"axes/{name}:{line}: {msgid}"
            for name in ("admin.py", "models.py")
            for line, msgid in gettext_literals(folder / name)
            if english(translation.gettext(msgid))
        ]
    assert untranslated == []


def test_every_string_marked_for_translation_has_a_chinese_one():
    """A msgid missing from the catalogue (and from Django's own) is caught here, not by a user."""
    ours = {
        entry["msgid"].encode().decode("unicode_escape").encode("latin-1").decode()
        for entry in entries()
    }
    with translation.override("zh-hans"):
        missing = [
            (where, msgid)
            for where, msgid in source_msgids()
            if msgid not in ours and translation.gettext(msgid) == msgid
        ]
    assert missing == []


def translated(catalogue: Path) -> set[str]:
    return {e["msgid"] for e in entries(catalogue) if e["msgstr"] and all(e["msgstr"])}


def test_make_messages_keeps_every_translation(tmp_path):
    """``make messages`` (makemessages --no-obsolete) reads only this project's files and
    drops every entry it did not find there: a label of another app translated here
    would be lost, and read in English again, the next time anyone ran it."""
    root = CATALOGUE.parents[3]
    copy = tmp_path / "project"
    ignored = shutil.ignore_patterns(".*", "var", "node_modules", "staticfiles", "__pycache__")
    shutil.copytree(root, copy, ignore=ignored)
    subprocess.run(
        [sys.executable, "manage.py", "makemessages", "-l", "zh_Hans", "--no-obsolete"],
        cwd=copy,
        check=True,
        capture_output=True,
    )

    remade = copy / CATALOGUE.relative_to(root)
    # (And the catalogue holds no entry the code no longer has: it would be dropped too.)
    assert sorted(translated(CATALOGUE) - translated(remade)) == []
