from django.apps import AppConfig
from django.db.backends.signals import connection_created


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"

    def ready(self) -> None:
        from accounts.teams.bank_work import bank_work_counter_register
        from memories.review.bank_work import review_work
        from memories.serving.upkeep import hnsw_session_settings

        # Every new database connection gets the vector-scan settings once (see hnsw_scan).
        connection_created.connect(hnsw_session_settings, dispatch_uid="memories.hnsw_session_settings")
        # The home page counts the items waiting for review in each bank.
        bank_work_counter_register(review_work)
