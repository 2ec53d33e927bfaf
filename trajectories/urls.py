from django.urls import path

from trajectories import views

app_name = "trajectories"
urlpatterns = [
    path("banks/<uuid:bank_id>/", views.dashboard, name="dashboard"),
    path("banks/<uuid:bank_id>/trajectories/", views.trajectory_list, name="list"),
    path("banks/<uuid:bank_id>/trajectories/<uuid:trajectory_id>/", views.trajectory_detail, name="detail"),
    path("banks/<uuid:bank_id>/trajectories/<uuid:trajectory_id>/steps/", views.trajectory_steps, name="steps"),
    path("banks/<uuid:bank_id>/impact/", views.impact, name="impact"),
]
