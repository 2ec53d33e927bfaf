from django.contrib import admin

from memories.items.experiences import Experience
from memories.items.models import MemoryItem, MemoryItemVersion
from memories.serving.models import RetrievalEvent


class VersionInline(admin.TabularInline):
    model = MemoryItemVersion
    extra = 0
    can_delete = False
    readonly_fields = ["number", "action", "status", "title", "author", "created_at"]
    fields = readonly_fields


@admin.register(MemoryItem)
class MemoryItemAdmin(admin.ModelAdmin):
    list_display = ["title", "bank", "status", "origin", "served_count", "created_at"]
    list_filter = ["status", "origin", "bank"]
    search_fields = ["title", "description", "content"]
    list_select_related = ["bank", "bank__team"]
    exclude = ["embedding"]
    readonly_fields = ["embedding_hash", "embedding_model", "served_count", "last_served_at", "near_duplicates"]
    inlines = [VersionInline]


@admin.register(Experience)
class ExperienceAdmin(admin.ModelAdmin):
    list_display = ["task", "bank", "task_id", "created_at"]
    exclude = ["embedding"]
    list_select_related = ["bank"]


@admin.register(RetrievalEvent)
class RetrievalEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "bank", "arm", "mode", "k", "latency_ms"]
    list_filter = ["arm", "mode"]
    list_select_related = ["bank"]
