"""The notifications page, marking read, the navigation's count and the settings form."""

import pytest
from django.urls import reverse
from django.utils import timezone, translation

from notifications.models import Kind, Notification, NotificationSettings
from tests.factories import JobFactory

pytestmark = pytest.mark.django_db


def notify(user, n: int = 0, **fields) -> Notification:
    job = fields.pop("job", None) or JobFactory(owner=user, name=f"train-{user.username}-{n}")
    fields.setdefault("in_app", True)
    fields.setdefault("email_status", Notification.Email.OFF)
    return Notification.objects.create(
        user=user,
        kind=fields.pop("kind", Kind.SUCCEEDED),
        event_key=f"test:{user.pk}:{n}",
        job=job,
        data={"job_id": job.pk, "job_name": job.name, "reason": "All exited 0."},
        url=f"/jobs/{job.pk}/",
        **fields,
    )


def test_anonymous_is_sent_to_login(client):
    for name in ("notifications:list", "notifications:settings"):
        response = client.get(reverse(name))
        assert response.status_code == 302 and "/login/" in response["Location"]


def test_the_page_lists_only_the_users_own_in_app_notifications(owner_client, owner, outsider):
    mine = notify(owner, 1)
    notify(owner, 2, in_app=False)
    notify(outsider, 3)
    page = owner_client.get(reverse("notifications:list")).content.decode()
    assert f"Job #{mine.job_id} train-owner-1 succeeded" in page
    assert "train-owner-2" not in page and "train-outsider-3" not in page
    assert f'href="/jobs/{mine.job_id}/"' in page


def test_another_user_sees_none_of_them(client, owner, outsider):
    notify(owner, 1)
    client.force_login(outsider)
    page = client.get(reverse("notifications:list")).content.decode()
    assert "No notifications yet." in page and "train-owner-1" not in page


def test_newest_first_and_unread_marked(owner_client, owner):
    older = notify(owner, 1, read_at=timezone.now())
    newer = notify(owner, 2)
    page = owner_client.get(reverse("notifications:list")).content.decode()
    assert page.index(newer.job.name) < page.index(older.job.name)
    assert page.count('class="unread"') == 1
    assert f"Mark read: Job #{newer.job_id} train-owner-2 succeeded" in page


def test_mark_all_read(owner_client, owner, outsider):
    notify(owner, 1)
    notify(owner, 2)
    theirs = notify(outsider, 3)
    response = owner_client.post(reverse("notifications:mark_read"))
    assert response.status_code == 302 and response["Location"] == reverse("notifications:list")
    assert not Notification.objects.filter(user=owner, read_at__isnull=True).exists()
    assert Notification.objects.get(pk=theirs.pk).read_at is None


def test_mark_one_read_and_never_another_users(owner_client, owner, outsider):
    first, second = notify(owner, 1), notify(owner, 2)
    theirs = notify(outsider, 3)
    owner_client.post(reverse("notifications:mark_read"), {"id": first.pk})
    owner_client.post(reverse("notifications:mark_read"), {"id": theirs.pk})
    unread = set(Notification.objects.filter(read_at__isnull=True).values_list("pk", flat=True))
    assert unread == {second.pk, theirs.pk}


def test_mark_read_needs_post_and_a_whole_number(owner_client):
    assert owner_client.get(reverse("notifications:mark_read")).status_code == 405
    response = owner_client.post(reverse("notifications:mark_read"), {"id": "x1"})
    assert response.status_code == 400
    assert "whole number" in response.content.decode()


def test_htmx_mark_read_answers_the_list_and_the_navigation_count(owner_client, owner):
    first = notify(owner, 1)
    notify(owner, 2)
    response = owner_client.post(
        reverse("notifications:mark_read"), {"id": first.pk}, headers={"HX-Request": "true"}
    )
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    assert 'id="notifications"' in body
    assert 'id="nav-unread" hx-swap-oob="true"' in body and ">1<" in body


def test_navigation_shows_the_unread_count_on_every_page(owner_client, owner):
    notify(owner, 1)
    notify(owner, 2)
    notify(owner, 3, read_at=timezone.now())
    page = owner_client.get(reverse("jobs:list")).content.decode()
    assert '<span class="badge">2<span class="visually-hidden"> unread</span>' in page


def test_navigation_count_stops_at_99_plus(owner_client, owner):
    job = JobFactory(owner=owner)
    for n in range(101):
        notify(owner, n, job=job)
    page = owner_client.get(reverse("jobs:list")).content.decode()
    assert '<span class="badge">99+' in page


def test_no_badge_without_unread(owner_client, owner):
    notify(owner, 1, read_at=timezone.now())
    page = owner_client.get(reverse("jobs:list")).content.decode()
    assert '<span id="nav-unread"></span>' in page


def test_list_queries_do_not_grow_with_notifications(
    owner_client, owner, django_assert_max_num_queries
):
    for n in range(3):
        notify(owner, n)
    # Session, user, free-hours banner, navigation count, page count, page rows.
    with django_assert_max_num_queries(6):
        assert owner_client.get(reverse("notifications:list")).status_code == 200
    job = JobFactory(owner=owner)
    for n in range(3, 80):
        notify(owner, n, job=job)
    with django_assert_max_num_queries(6):
        assert owner_client.get(reverse("notifications:list")).status_code == 200


def test_the_navigation_count_is_one_query(owner, django_assert_num_queries):
    from notifications.selectors import unread_count

    for n in range(5):
        notify(owner, n)
    with django_assert_num_queries(1):
        assert unread_count(user=owner) == 5


def test_settings_page_labels_every_control(owner_client):
    page = owner_client.get(reverse("notifications:settings")).content.decode()
    for kind in Kind.values:
        for channel in ("in_app", "email"):
            assert f'<label for="id_{kind}_{channel}"' in page
    assert '<label for="id_long_wait_minutes">' in page
    assert '<label for="id_language">' in page
    # The defaults: email for the ends and free hours, not for starts and long waits.
    assert 'name="started_email" id="id_started_email"' in page
    assert 'name="failed_email" id="id_failed_email" checked' in page
    assert 'name="started_email" id="id_started_email" checked' not in page


def test_saving_settings(owner_client, owner):
    data = {"failed_in_app": "on", "long_wait_minutes": "90", "language": "zh-hans"}
    response = owner_client.post(reverse("notifications:settings"), data)
    assert response.status_code == 302
    saved = NotificationSettings.objects.get(user=owner)
    assert saved.failed_in_app and not saved.failed_email and not saved.succeeded_in_app
    assert (saved.long_wait_minutes, saved.language) == (90, "zh-hans")


@pytest.mark.parametrize(
    ("minutes", "message"),
    [
        ("0", "The long wait threshold must be at least 1 minute"),
        ("10081", "The long wait threshold must be at most 10080 minutes (a week)"),
        ("half", "The long wait threshold must be a whole number of minutes"),
        ("", "Enter the long wait threshold in minutes"),
    ],
)
def test_a_bad_threshold_names_the_field_and_its_limit(owner_client, owner, minutes, message):
    data = {"long_wait_minutes": minutes, "language": "en"}
    response = owner_client.post(reverse("notifications:settings"), data)
    assert response.status_code == 422
    assert message in response.content.decode()
    assert not NotificationSettings.objects.filter(user=owner).exists()


def test_a_bad_language_is_refused(owner_client, owner):
    data = {"long_wait_minutes": "30", "language": "tlh"}
    response = owner_client.post(reverse("notifications:settings"), data)
    assert response.status_code == 422
    assert not NotificationSettings.objects.filter(user=owner).exists()


def test_settings_page_says_where_emails_go(owner_client, owner):
    page = owner_client.get(reverse("notifications:settings")).content.decode()
    assert "no email address" in page
    owner.email = "owner@example.com"
    owner.save()
    page = owner_client.get(reverse("notifications:settings")).content.decode()
    assert "Emails go to owner@example.com." in page


@pytest.fixture
def back_to_english():
    """A request leaves its language active in this thread; the next tests expect English."""
    yield
    translation.deactivate()


def test_the_email_language_starts_as_the_page_language(owner_client, back_to_english):
    owner_client.post(reverse("set_language"), {"language": "zh-hans", "next": "/"})
    page = owner_client.get(reverse("notifications:settings")).content.decode()
    assert '<option value="zh-hans" selected>' in page
