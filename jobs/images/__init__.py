"""The site's work images: its store, what is in each, and the ways admins add them."""
