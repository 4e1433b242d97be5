from django.urls import path

from . import views

app_name = "billing"
urlpatterns = [
    path("", views.my_billing, name="mine"),
]
