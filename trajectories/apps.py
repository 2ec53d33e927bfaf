from django.apps import AppConfig

from reasoningbank_site import pgarrays


class TrajectoriesConfig(AppConfig):
    name = "trajectories"
    verbose_name = "Trajectories"

    def ready(self):
        pgarrays.register()  # a batch's bulk insert writes its JSON columns as arrays (reasoningbank_site.pgarrays)
