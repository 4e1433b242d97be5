"""factory_boy factories for the rows tests need."""

import factory
from django.contrib.auth import get_user_model

from jobs.models import (
    CodeVersion,
    Dataset,
    Image,
    Job,
    PretrainedModel,
    Project,
    Replica,
    ReplicaAttempt,
)
from resources.models import GpuModel, Node, Quota, Spec
from resources.services import node_sync_cards


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ["username"]

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw")


class GpuModelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = GpuModel
        django_get_or_create = ["name"]

    name = "V100"
    card_memory_gib = 16
    cpu_cores_per_card = 12
    memory_gib_per_card = 56
    relative_speed = 2.3
    supports_vgpu = True
    free_tier = False


class NodeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Node
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"node-{n:04d}")
    gpu_model = factory.SubFactory(GpuModelFactory)
    gpu_count = 8
    cpu_milli = 96_000
    memory_mib = 448 * 1024
    storage_gib = 500

    @factory.post_generation
    def cards(obj: Node, create: bool, extracted, **kwargs) -> None:
        if create:
            node_sync_cards(node=obj)


class SpecFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Spec

    name = factory.Sequence(lambda n: f"spec-{n}")
    kind = "gpu"
    gpu_model = factory.SubFactory(GpuModelFactory)
    gpu_count = 1
    cpu_milli = 12_000
    memory_mib = 56 * 1024


class QuotaFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Quota

    user = factory.SubFactory(UserFactory)
    resource = Quota.Resource.GPU
    gpu_model = factory.SubFactory(GpuModelFactory)
    limit = 8


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    name = factory.Sequence(lambda n: f"project-{n}")
    owner = factory.SubFactory(UserFactory)


class DatasetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Dataset

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"dataset-{n}")
    path = factory.LazyAttribute(lambda o: f"{o.project.name}/datasets/{o.name}")
    size_samples = 6000


class PretrainedModelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PretrainedModel

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"pretrained-{n}")
    path = factory.LazyAttribute(lambda o: f"{o.project.name}/pretrained/{o.name}")


class CodeVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CodeVersion

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"v{n}")
    path = factory.LazyAttribute(lambda o: f"{o.project.name}/code/{o.name}")


class ImageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Image

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"image-{n}")


class JobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Job

    owner = factory.SubFactory(UserFactory)
    project = factory.SubFactory(ProjectFactory, owner=factory.SelfAttribute("..owner"))
    name = factory.Sequence(lambda n: f"job-{n}")
    resource_kind = "gpu"
    gpu_model = factory.SubFactory(GpuModelFactory)
    gpu_count = 1
    cpu_milli = 12_000
    memory_mib = 56 * 1024
    command = "echo hello"


class ReplicaFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Replica

    job = factory.SubFactory(JobFactory)
    index = 0
    node = factory.SubFactory(NodeFactory, gpu_model=factory.SelfAttribute("..job.gpu_model"))


class ReplicaAttemptFactory(factory.django.DjangoModelFactory):
    """An attempt with whatever times a test gives (``started_at``, ``ended_at``)."""

    class Meta:
        model = ReplicaAttempt

    replica = factory.SubFactory(ReplicaFactory)
    number = 1
    node = factory.SelfAttribute("replica.node")
    state = ReplicaAttempt.State.RUNNING
