from django.contrib import admin

from accounts.models import ApiToken, AuditEvent, Bank, Invitation, Membership, Team


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


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["email", "team", "role", "created_at", "expires_at", "accepted_at", "revoked_at"]
    list_select_related = ["team"]
    readonly_fields = ["token_hash", "accepted_at", "accepted_by", "created_at"]
    search_fields = ["email"]

    def has_add_permission(self, request):
        return False  # the link is emailed once: invite from the team page


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "team", "bank", "action", "actor_user", "actor_token", "object_type", "object_id"]
    list_filter = ["action"]
    list_select_related = ["team", "bank", "actor_user", "actor_token"]
    search_fields = ["object_id", "object_repr", "action"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # append-only

    def has_delete_permission(self, request, obj=None):
        return False
