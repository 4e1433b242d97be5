"""Both languages complete: every string the tested pages translate has a zh-hans entry.

The pages are rendered in Chinese while a recorder sits at the end of the active
translation's fallback chain: a msgid reaches it only when the compiled catalogue
(locale/zh_Hans/LC_MESSAGES/django.mo) has no translation for it.
"""

import gettext

import pytest
from django.conf import settings
from django.test import Client
from django.utils import translation

from tests.factories import JobFactory


class MissingRecorder(gettext.NullTranslations):
    def __init__(self) -> None:
        super().__init__()
        self.missing: set[str] = set()

    def gettext(self, message):
        # Django translates the language names twice (once lazily, once to list
        # them); a msgid of this project is English, so skip what has no Latin letter.
        if any("a" <= c.lower() <= "z" for c in message):
            self.missing.add(message)
        return message

    def ngettext(self, msgid1, msgid2, n):
        self.missing.add(msgid1)
        return msgid1 if n == 1 else msgid2

    def pgettext(self, context, message):
        self.missing.add(f"{context}|{message}")
        return message

    def npgettext(self, context, msgid1, msgid2, n):
        self.missing.add(f"{context}|{msgid1}")
        return msgid1 if n == 1 else msgid2


@pytest.fixture
def recorder():
    chinese = translation.trans_real.translation("zh-hans")
    recorder = MissingRecorder()
    chinese.add_fallback(recorder)  # appended after the English fallback
    yield recorder
    node = chinese
    while node._fallback is not None and node._fallback is not recorder:
        node = node._fallback
    node._fallback = None


def test_every_string_on_the_tested_pages_has_a_chinese_translation(site, owner, recorder):
    job = JobFactory(owner=owner, project=site.project, gpu_model=site.v100, max_runtime_minutes=60)
    client = Client(headers={"accept-language": "zh-hans"})
    client.force_login(owner)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    paths = ["/jobs/", "/jobs/new/", f"/jobs/{job.pk}/", f"/jobs/{job.pk}/runtime/"]
    paths += ["/resources/", "/billing/", "/profile/", "/jobs/templates/"]
    paths += ["/notifications/", "/notifications/settings/"]
    for path in paths:
        assert client.get(path).status_code == 200, path
    for kind in ("cpu", "vgpu"):
        client.post("/jobs/new/", {"kind": kind, "_action": "apply", "project": "vision"})
    missing = sorted(recorder.missing)
    assert missing == [], f"{len(missing)} strings without a zh-hans translation: {missing}"
