"""A real PyTorch training run, preempted mid-way, resumes from TRAINYARD_CHECKPOINT and
ends with exactly the weights of a run that was never interrupted.

The run trains a small model on fixed data (fixed seed, 400 steps of SGD with momentum,
random mini-batches), saving step, model, optimizer and RNG state every 20 steps and
on TERM. Once alone; then as a preemptible job borrowing beyond its owner's quota, which
a job within its quota preempts on the same node (as ``test_preemption_agent.py``):
attempt 2 resumes from the step attempt 1 saved at TERM and finishes with the same hash.
"""

import re

import pytest
from django.conf import settings

from jobs.execution.files import replica_output_dir
from jobs.models import Job, ReplicaAttempt
from resources.models import Quota, SiteSettings
from tests.agent_support import attempt_log, attempts_of, cpu_job, make_node, wait_for_state
from tests.factories import CodeVersionFactory, UserFactory
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

TRAIN = """\
import hashlib, os, signal, sys, time
import torch

STEPS, SAVE_EVERY = 400, 20
# Only the first attempt dawdles, so that it is mid-training when preempted.
pause = float(sys.argv[1]) if os.environ["TRAINYARD_ATTEMPT"] == "1" else 0.0
checkpoint = os.path.join(os.environ["TRAINYARD_CHECKPOINT"], "state.pt")
print("grace", os.environ.get("TRAINYARD_PREEMPT_GRACE"), flush=True)

torch.set_num_threads(1)
torch.manual_seed(0)
data = torch.randn(256, 8)
target = data @ torch.randn(8, 1) + 0.1 * torch.randn(256, 1)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
step = 0
if os.path.exists(checkpoint):
    saved = torch.load(checkpoint)
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    torch.set_rng_state(saved["rng"])
    step = saved["step"]
    print(f"resumed from step {step}", flush=True)


def save():
    state = {"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict()}
    torch.save({**state, "rng": torch.get_rng_state()}, checkpoint + ".partial")
    os.replace(checkpoint + ".partial", checkpoint)


stopping = []
signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
while step < STEPS:
    batch = torch.randint(0, 256, (32,))
    loss = torch.nn.functional.mse_loss(model(data[batch]), target[batch])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    step += 1
    if stopping:
        save()
        print(f"saved step {step} at TERM", flush=True)
        sys.exit(0)
    if step % SAVE_EVERY == 0:
        save()
        print(f"step {step}", flush=True)
    time.sleep(pause)

digest = hashlib.sha256()
for tensor in model.state_dict().values():
    digest.update(bytes(tensor.flatten().view(torch.uint8).tolist()))
digest = digest.hexdigest()
with open(os.path.join(os.environ["TRAINYARD_DATA_OUT"], "hash.txt"), "w") as handle:
    handle.write(digest)
print("weights", digest, flush=True)
"""


def training_job(owner, *, pause: float, **fields) -> Job:
    code = CodeVersionFactory(project__owner=owner, name="train")
    folder = settings.TRAINYARD_DATA_ROOT / code.path
    folder.mkdir(parents=True)
    (folder / "train.py").write_text(TRAIN)
    command = f"python -W ignore $TRAINYARD_CODE/train.py {pause}"
    return cpu_job(command, owner=owner, project=code.project, code_version=code, **fields)


def weights_hash(job: Job) -> str:
    node = attempts_of(job)[-1].node.name
    return (replica_output_dir(node, job.pk, 0) / "hash.txt").read_text()


def test_a_preempted_training_run_resumes_and_ends_with_the_same_weights(agent_env):
    SiteSettings.objects.update_or_create(pk=1, defaults={"preempt_grace_seconds": 20})
    agent = agent_env([make_node(cpu_milli=2000)])
    bob = UserFactory(username="bob")  # no quota: every job of his is within it

    alone = wait_for_state(training_job(bob, pause=0), Job.FINAL_STATES, agent)
    assert alone.state == Job.State.SUCCEEDED, alone.state_reason
    expected = weights_hash(alone)

    ada = UserFactory(username="ada")
    Quota.objects.create(user=ada, resource=Quota.Resource.CPU, limit=1000)
    borrower = training_job(ada, pause=0.04, cpu_milli=2000, preemptible=True)
    borrower = wait_for_state(borrower, Job.State.RUNNING, agent)
    assert borrower.borrowed
    wait_until(lambda: "step 40\n" in attempt_log(attempts_of(borrower)[0]), what="training")

    newcomer = wait_for_state(cpu_job("echo newcomer", owner=bob), Job.State.SUCCEEDED, agent)
    borrower = wait_for_state(borrower, Job.FINAL_STATES, agent)
    assert borrower.state == Job.State.SUCCEEDED, borrower.state_reason
    first, second = attempts_of(borrower)
    logs = attempt_log(first) + attempt_log(second)
    assert (first.state, first.exit_code) == (ReplicaAttempt.State.STOPPED, 0), logs  # saved
    assert borrower.attempt == 2 and newcomer.state == Job.State.SUCCEEDED
    assert "grace 20\n" in attempt_log(first)
    saved_at = int(re.search(r"saved step (\d+) at TERM", attempt_log(first))[1])
    resumed_at = int(re.search(r"resumed from step (\d+)", attempt_log(second))[1])
    print(f"preempted at step {saved_at}, resumed from step {resumed_at}")
    assert 0 < resumed_at == saved_at < 400
    assert weights_hash(borrower) == expected
