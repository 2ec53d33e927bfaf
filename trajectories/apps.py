from django.apps import AppConfig


class TrajectoriesConfig(AppConfig):
    name = "trajectories"
    verbose_name = "Trajectories"

    def ready(self) -> None:
        from accounts.teams.bank_work import bank_work_counter_register
        from trajectories.dashboard.bank_work import trajectory_work

        # The home page counts the trajectories waiting for a person in each bank.
        bank_work_counter_register(trajectory_work)
