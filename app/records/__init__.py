"""The values a host's judgement is made of, shared by the side that writes it (`judging/`,
`alerting/`, `services/`) and the side that reads it (`queries/`), which never imports
judging: the fabric (`HostFabric`), the judged state (`HostHealth`), a (pair, test) key.
"""
