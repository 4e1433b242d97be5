"""``python manage.py create_api_token <username>``: print a new personal API token."""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.services import api_token_create


class Command(BaseCommand):
    help = "Create a personal API token for a user and print it (it is shown only once)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="cli", help="A name to recognise the token by.")

    def handle(self, *args, username: str, name: str, **options) -> None:
        user_model = get_user_model()
        try:
            user = user_model.objects.get(**{user_model.USERNAME_FIELD: username})
        except user_model.DoesNotExist as error:
            raise CommandError(f"No user named {username!r}") from error
        try:
            _row, token = api_token_create(user=user, name=name)
        except ValidationError as error:
            raise CommandError("; ".join(error.messages)) from error
        self.stdout.write(token)
