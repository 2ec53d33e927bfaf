from django.apps import AppConfig


class SiteConfig(AppConfig):
    name = "reasoningbank_site"
    verbose_name = "ReasoningBank site"
