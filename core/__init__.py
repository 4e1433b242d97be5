"""The base every app builds on: reasons, bulk SQL, lookups, tasks sent by name, API paging.

It imports no app of the project and nothing of ``trainyard``, the project package that
wires the apps together; every app may import it.
"""
