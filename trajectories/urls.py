from django.urls import path

from trajectories import views

app_name = "trajectories"
urlpatterns: list = []
