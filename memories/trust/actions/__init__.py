"""What a lesson would make an agent do: the hosts it would contact, the
commands it would run, the packages it would install, the accounts it would
pay and the permissions it would grant, read from the item's text whatever
its language (``extract``, pure), recorded per item (``models``), and an
action the bank never approved and the source task did not ask for made a
finding (``services``)."""
