from django.contrib import admin

from accounts.models import ApiToken, Bank, Membership, Team


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(Bank)
class BankAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "slug", "retrieval_mode", "top_k", "min_similarity", "archived_at"]
    list_filter = ["retrieval_mode", "team"]
    search_fields = ["name", "slug"]
    list_select_related = ["team"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "bank", "scopes", "created_at", "last_used_at", "expires_at", "revoked_at"]
    list_select_related = ["bank", "bank__team"]
    readonly_fields = ["prefix", "token_hash", "last_used_at", "created_at"]
    search_fields = ["prefix", "name"]

    def has_add_permission(self, request):
        return False  # the secret must be shown once: use `manage.py rb_token create`
