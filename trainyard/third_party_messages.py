"""Labels of another app that only this project's catalogue translates.

django-axes ships no Simplified Chinese. Staff read its admin (lockouts, failed log-ins,
the access log) through gettext, so ``locale/`` carries its model, field and admin labels. They
are named here because ``makemessages`` reads only this project's files: without them,
``make messages`` would drop their translations (tests/test_catalogue.py). Nothing
imports this module; ``gettext_noop`` only marks each label for extraction.
"""

from django.utils.translation import gettext_noop

# axes/models.py and axes/admin.py, django-axes 8.3.
AXES_LABELS = [
    gettext_noop("User Agent"),
    gettext_noop("IP Address"),
    gettext_noop("HTTP Accept"),
    gettext_noop("Path"),
    gettext_noop("Attempt Time"),
    gettext_noop("Access lock out"),
    gettext_noop("access failure"),
    gettext_noop("access failures"),
    gettext_noop("GET Data"),
    gettext_noop("POST Data"),
    gettext_noop("Failed Logins"),
    gettext_noop("access attempt"),
    gettext_noop("access attempts"),
    gettext_noop("Access Attempt"),
    gettext_noop("Expires At"),
    gettext_noop("The time when access attempt expires and is no longer valid."),
    gettext_noop("access attempt expiration"),
    gettext_noop("access attempt expirations"),
    gettext_noop("Logout Time"),
    gettext_noop("Session key hash (sha256)"),
    gettext_noop("access log"),
    gettext_noop("access logs"),
    # Its admin's own: the lockout filter and status, fieldsets, an action.
    gettext_noop("Locked Out"),
    gettext_noop("Attempt Remaining"),
    gettext_noop("Not set"),
    gettext_noop("Form Data"),
    gettext_noop("Meta Data"),
    gettext_noop("Clean up expired attempts"),
]
