"""The HTTP frame every route shares: dependencies (settings, sessions, tokens), errors, the
body readers, the OpenAPI document, response headers and conditional GET."""
