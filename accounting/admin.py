from django.contrib import admin
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from billing.models import Account, AccountEvent, FreeGrant, Price, UsageRecord

from .services import account_disable_billing, account_enable_billing, jobs_needing_billing


class FreeGrantInline(admin.TabularInline):
    model = FreeGrant
    extra = 0
    readonly_fields = ["used_card_seconds"]


class AccountEventInline(admin.TabularInline):
    model = AccountEvent
    extra = 0
    can_delete = False
    fields = readonly_fields = ["created_at", "actor", "kind", "shown_message"]

    @admin.display(description=_("message"))
    def shown_message(self, event: AccountEvent) -> str:
        return event.text


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = [
        "user",
        "billing_enabled",
        "billing_enabled_at",
        "billing_enabled_by",
        "billing_disabled_at",
        "billing_disabled_by",
    ]
    list_filter = ["billing_enabled"]
    search_fields = ["user__username", "user__email"]
    readonly_fields = [
        "billing_enabled",
        "billing_enabled_at",
        "billing_enabled_by",
        "billing_disabled_at",
        "billing_disabled_by",
    ]
    inlines = [FreeGrantInline, AccountEventInline]
    actions = ["enable_billing", "disable_billing"]

    @admin.action(description=_("Enable billing for the selected accounts"))
    def enable_billing(self, request: HttpRequest, queryset: QuerySet[Account]):
        if "confirmed" not in request.POST:
            return self._confirm(request, queryset, "enable_billing")
        for account in queryset:
            account_enable_billing(account=account, actor=request.user)
        self.message_user(request, _("Billing enabled."))
        return None

    @admin.action(description=_("Disable billing for the selected accounts"))
    def disable_billing(self, request: HttpRequest, queryset: QuerySet[Account]):
        if "confirmed" not in request.POST:
            return self._confirm(request, queryset, "disable_billing")
        stopped = sum(
            len(account_disable_billing(account=account, actor=request.user))
            for account in queryset
        )
        self.message_user(
            request,
            ngettext(
                "Billing disabled. %(count)s job stopped.",
                "Billing disabled. %(count)s jobs stopped.",
                stopped,
            )
            % {"count": stopped},
        )
        return None

    def _confirm(self, request: HttpRequest, queryset: QuerySet[Account], action: str):
        """The admin's intermediate page, as for deleting: the switch waits for a second POST."""
        accounts = list(queryset.select_related("user"))
        context = {
            **self.admin_site.each_context(request),
            "title": getattr(type(self), action).short_description,
            "accounts": accounts,
            "jobs": []
            if action == "enable_billing"
            else [job for account in accounts for job in jobs_needing_billing(account=account)],
            "action": action,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/billing/account/confirm_billing.html", context)


@admin.register(Price)
class PriceAdmin(admin.ModelAdmin):
    list_display = ["gpu_model", "unit", "amount", "currency", "valid_from"]
    list_filter = ["unit", "gpu_model", "currency"]
    search_fields = ["gpu_model__name"]
    date_hierarchy = "valid_from"


@admin.register(UsageRecord)
class UsageRecordAdmin(admin.ModelAdmin):
    list_display = [
        "account",
        "job",
        "phase",
        "gpu_model",
        "period_start",
        "period_end",
        "quantity",
        "unit_seconds",
        "free_unit_seconds",
        "billable_unit_seconds",
        "unit_price",
        "amount",
        "billed",
        "unbilled_reason",
    ]
    list_filter = ["billed", "gpu_model", "phase"]
    search_fields = ["account__user__username"]
    date_hierarchy = "period_start"
    list_select_related = ["account__user", "job", "gpu_model"]

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
