from django.urls import path

from . import staff_views, views

app_name = "billing"
urlpatterns = [
    path("", views.my_billing, name="mine"),
    path("statement.csv", views.my_billing_csv, name="mine_csv"),
    path("overview/", staff_views.overview, name="overview"),
    path("overview.csv", staff_views.overview_export, name="overview_csv"),
    path("accounts/<int:account_id>/", staff_views.account_statement, name="account"),
    path(
        "accounts/<int:account_id>/statement.csv",
        staff_views.account_statement_export,
        name="account_csv",
    ),
    path(
        "accounts/<int:account_id>/enable/",
        staff_views.account_billing_enable,
        name="account_enable",
    ),
    path(
        "accounts/<int:account_id>/disable/",
        staff_views.account_billing_disable,
        name="account_disable",
    ),
]
