from django.urls import path

from workspace import views

urlpatterns = [
    path("", views.home, name="home"),
]
