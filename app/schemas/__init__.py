"""API shapes (pydantic), one module per resource: what the dashboard, schedulers and people
read from `/api/v1`, and the bodies they post."""
