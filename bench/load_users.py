"""Locust users for ``bench/load.py``: people browsing, refreshing, submitting and stopping.

Each simulated user is one of the accounts ``load.py`` created; it reads its
session cookie and API token from the file named by ``TRAINYARD_LOAD_USERS``.
Pages are fetched with the session (as a browser would), the API with the token.
"""

from __future__ import annotations

import itertools
import json
import os
import random

from locust import HttpUser, between, task

USERS = json.loads(open(os.environ["TRAINYARD_LOAD_USERS"]).read())  # noqa: SIM115
_next_user = itertools.count()


class Researcher(HttpUser):
    wait_time = between(0.5, 2.0)

    def on_start(self) -> None:
        me = USERS[next(_next_user) % len(USERS)]
        self.token = me["token"]
        self.project = me["project"]
        self.client.cookies.set(me["cookie_name"], me["session"])
        # As behind the TLS-terminating proxy of a production setup.
        self.client.headers["X-Forwarded-Proto"] = "https"
        self.api = {"Authorization": f"Bearer {self.token}"}
        self.mine: list[int] = []

    @task(5)
    def job_list_page(self) -> None:
        self.client.get("/jobs/", name="page /jobs/")

    @task(3)
    def job_list_api(self) -> None:
        self.client.get("/api/v1/jobs?limit=20", headers=self.api, name="api GET /jobs")

    @task(2)
    def new_job_page(self) -> None:
        self.client.get("/jobs/new/", name="page /jobs/new/")

    @task(3)
    def free_panel_refresh(self) -> None:
        self.client.post(
            "/api/v1/resources/free/refresh", headers=self.api, name="api refresh free"
        )

    @task(2)
    def resources_page(self) -> None:
        self.client.get("/resources/", name="page /resources/")

    @task(1)
    def billing_page(self) -> None:
        self.client.get("/billing/", name="page /billing/")

    @task(2)
    def submit(self) -> None:
        kind = random.choice(["gpu", "cpu"])
        resources = (
            {"kind": "gpu", "gpu_model": "V100", "gpu_count": random.choice([1, 2, 4])}
            if kind == "gpu"
            else {"kind": "cpu", "gpu_model": None, "cpu_cores": random.choice([2, 4, 8])}
        )
        body = {
            "project": self.project,
            "name": "load",
            "command": "python train.py",
            "resources": resources,
            "max_runtime_minutes": 60,
        }
        with self.client.post(
            "/api/v1/jobs", json=body, headers=self.api, name="api POST /jobs", catch_response=True
        ) as response:
            if response.status_code == 201:
                self.mine.append(response.json()["id"])
                response.success()
            else:
                response.failure(f"{response.status_code}: {response.text[:200]}")

    @task(1)
    def stop_job(self) -> None:
        if not self.mine:
            return
        job_id = self.mine.pop(random.randrange(len(self.mine)))
        self.client.post(
            f"/api/v1/jobs/{job_id}/stop", headers=self.api, name="api POST /jobs/{id}/stop"
        )

    @task(2)
    def job_page(self) -> None:
        if self.mine:
            job_id = random.choice(self.mine)
            self.client.get(f"/jobs/{job_id}/", name="page /jobs/{id}/")
