"""What `POST /api/v1/reports` answers."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, Field

from peerwatch.app.schemas.common import with_example


class IngestResult(BaseModel):
    model_config = with_example({
        "report_id": "6f1c0c9e-2a54-4c7e-9d8e-1b0f5e0b7a11", "host": "gpu-node-17",
        "duplicate": False, "measurements": 393, "counter_samples": 288,
    })
    report_id: uuid.UUID
    host: str
    duplicate: bool = Field(description="True when this report_id was stored before; "
                                        "nothing changed.")
    measurements: int = Field(description="Transfer results stored by this report.")
    counter_samples: int = Field(description="Per-link counter rows stored by this report.")
