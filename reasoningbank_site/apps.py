from django.apps import AppConfig


class SiteConfig(AppConfig):
    name = "reasoningbank_site"
    verbose_name = "ReasoningBank site"

    def ready(self) -> None:
        from reasoningbank_site import after_response

        after_response.connect()  # before the first request starts
