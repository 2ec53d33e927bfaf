from django.apps import AppConfig
from django.db.backends.signals import connection_created


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"

    def ready(self) -> None:
        from memories.serving.upkeep import hnsw_session_settings

        # Every new database connection gets the vector-scan settings once (see hnsw_scan).
        connection_created.connect(hnsw_session_settings, dispatch_uid="memories.hnsw_session_settings")
