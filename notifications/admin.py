from django.contrib import admin

from .models import Notification, NotificationSettings


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ["created_at", "user", "kind", "job", "in_app", "email_status", "read_at"]
    list_filter = ["kind", "email_status", "in_app"]
    search_fields = ["user__username", "event_key"]
    list_select_related = ["user", "job"]
    raw_id_fields = ["user", "job"]
    readonly_fields = ["created_at", "emailed_at"]


@admin.register(NotificationSettings)
class NotificationSettingsAdmin(admin.ModelAdmin):
    list_display = ["user", "long_wait_minutes", "language", "updated_at"]
    search_fields = ["user__username"]
    raw_id_fields = ["user"]
