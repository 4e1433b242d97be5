"""The five workload templates of seed 000 and its tables of training times, as data.

Seed 000 (``seeds/000_acc14283f7dab290.txt``) measures four networks on V100 /
P40 / P4 with 1, 2 and 6 single-card nodes, so a "node" there is one card;
Trainyard counts cards (replicas × cards per replica) the same way.

"6000+" and "400+" samples are taken as 6000 and 400. The rough ranges "from
experience" do not name a GPU; their times sit between the measured V100 and
P40 rows and closest to V100, so they are recorded as V100. A range is taken
at its middle ("12-14 min" → 13 min, "under 10 min" → 9 min, "1-1.5w" → 12,500).
"""

from typing import NamedTuple

SOURCE_FILE = "seed 000_acc14283f7dab290"
MEASURED_SOURCE = SOURCE_FILE + ", measured table: %(network)s (%(samples)s samples)"
ROUGH_SOURCE = SOURCE_FILE + ", rough range from experience: %(range)s (GPU not stated, as V100)"

NODE_COUNTS = (1, 2, 6)
GPU_ORDER = ("V100", "P40", "P4")

TRAIN = (
    'python "$TRAINYARD_CODE/train.py" --task %(task)s --network %(network)s '
    '--data "$TRAINYARD_DATA_IN1" --output "$TRAINYARD_DATA_OUT"%(extra)s'
)
AUGMENT = (
    'python "$TRAINYARD_CODE/augment_search.py" --data "$TRAINYARD_DATA_IN1" '
    '--output "$TRAINYARD_DATA_OUT/augmentation-policy.json"'
)


class TemplateSeed(NamedTuple):
    name: str
    task_type: str
    network: str
    command_template: str
    augmentation_command: str
    forbidden_gpu_models: tuple[str, ...]
    default_max_runtime_minutes: int


def _train(task: str, network: str, extra: str = "") -> str:
    return TRAIN % {"task": task, "network": network, "extra": extra}


TEMPLATES = (
    TemplateSeed(
        "ResNet50",
        "image_classification",
        "resnet50",
        _train("classification", "resnet50", " --batch-size 16"),
        AUGMENT,
        (),
        60,
    ),
    TemplateSeed(
        "MobileNet",
        "image_classification",
        "mobilenet",
        _train("classification", "mobilenet"),
        AUGMENT,
        (),
        60,
    ),
    # Seed 000: "NASNet does not run on GPU P4 for now".
    TemplateSeed(
        "NASNet",
        "image_classification",
        "nasnet",
        _train("classification", "nasnet"),
        AUGMENT,
        ("P4",),
        180,
    ),
    TemplateSeed(
        "Faster R-CNN ResNet50-FPN",
        "object_detection",
        "faster_rcnn_resnet50_fpn",
        _train("detection", "faster_rcnn_resnet50_fpn", " --epochs 20"),
        AUGMENT,
        (),
        180,
    ),
    TemplateSeed(
        "SSD-MobileNetV1",
        "object_detection",
        "ssd_mobilenet_v1",
        _train("detection", "ssd_mobilenet_v1", " --epochs 20"),
        AUGMENT,
        (),
        120,
    ),
)

# template: (samples, {gpu: (seconds on 1, 2, 6 nodes)})
MEASURED = {
    "ResNet50": (6000, {"V100": (400, 326, 198), "P40": (867, 562, 540), "P4": (1385, 751, 302)}),
    "MobileNet": (6000, {"V100": (259, 197, 161), "P40": (396, 285, 333), "P4": (630, 370, 178)}),
    "Faster R-CNN ResNet50-FPN": (
        400,
        {
            "V100": (29.1 * 60, 16.1 * 60, 6 * 60),
            "P40": (40 * 60, 21.8 * 60, 11.8 * 60),
            "P4": (66 * 60, 34.4 * 60, 13.28 * 60),
        },
    ),
    "SSD-MobileNetV1": (
        400,
        {
            "V100": (19 * 60, 10.3 * 60, 3.9 * 60),
            "P40": (28.1 * 60, 14.6 * 60, 4.8 * 60),
            "P4": (25.4 * 60, 13.4 * 60, 5.1 * 60),
        },
    ),
}

# template: [(samples, nodes, seconds, the seed's words)]
ROUGH = {
    "ResNet50": [
        (12_500, 2, 13 * 60, "10-15k samples, 2 nodes 12-14 min"),
        (12_500, 4, 11 * 60, "10-15k samples, 4 nodes about 11 min"),
        (5000, 1, 5 * 60, "4-6k samples, about 5 min whatever the nodes"),
        (5000, 4, 5 * 60, "4-6k samples, about 5 min whatever the nodes"),
        (500, 1, 150, "under 1k samples, 2-3 min whatever the nodes"),
        (500, 4, 150, "under 1k samples, 2-3 min whatever the nodes"),
    ],
    "Faster R-CNN ResNet50-FPN": [
        (300, 2, 15 * 60, "200-400 samples, 2 nodes ten-odd to twenty minutes"),
        (300, 4, 9 * 60, "200-400 samples, 4 nodes under 10 min"),
        (1900, 2, 60 * 60, "1800-2000 samples, 2 nodes about 60 min"),
        (1900, 4, 40 * 60, "1800-2000 samples, 4 nodes about 40 min"),
    ],
}


class SeedPoint(NamedTuple):
    template: str
    samples: int
    gpu_model: str
    nodes: int
    seconds: float
    kind: str
    source: str


def seed_points() -> list[SeedPoint]:
    """Every point of both tables, measured first."""
    points = []
    for template, (samples, by_gpu) in MEASURED.items():
        source = MEASURED_SOURCE % {"network": template, "samples": f"{samples}+"}
        for gpu_model in GPU_ORDER:
            for nodes, seconds in zip(NODE_COUNTS, by_gpu[gpu_model], strict=True):
                points.append(
                    SeedPoint(template, samples, gpu_model, nodes, seconds, "measured", source)
                )
    for template, rows in ROUGH.items():
        for samples, nodes, seconds, words in rows:
            source = ROUGH_SOURCE % {"range": words}
            points.append(SeedPoint(template, samples, "V100", nodes, seconds, "rough", source))
    return points
