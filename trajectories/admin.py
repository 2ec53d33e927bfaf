from django.contrib import admin

from trajectories.models import Judgment, Trajectory


class JudgmentInline(admin.TabularInline):
    model = Judgment
    extra = 0
    can_delete = False
    readonly_fields = ["source", "label", "rationale", "model", "prompt_version", "author", "created_at"]


@admin.register(Trajectory)
class TrajectoryAdmin(admin.ModelAdmin):
    list_display = ["task", "bank", "status", "verdict", "step_count", "input_format", "created_at"]
    list_filter = ["status", "verdict", "input_format", "bank"]
    search_fields = ["task", "external_id", "agent"]
    list_select_related = ["bank"]
    readonly_fields = ["public_id", "steps"]
    inlines = [JudgmentInline]
