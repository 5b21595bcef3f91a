create table [we ird]]].[Order]]Details; --] (
    [it's] int not null,
    [a b] nvarchar(10) null,
    [[x]]] int not null,
    [名前] nvarchar(20) null,
    [--c] date null,
    constraint [PK_Order]]Details; --] primary key ([it's], [[x]]])
)
go
-- I statement
insert into [we ird]]].[Order]]Details; --]([it's], [a b], [[x]]], [名前], [--c]) values (?, ?, ?, ?, ?)
go
-- U statement
exec sp_executesql N'declare @primarykey_text nvarchar(100) = ''''
update [we ird]]].[Order]]Details; --] set
		[it''s] = @c1,
		[a b] = @c2,
		[[x]]] = @c3,
		[名前] = @c4,
		[--c] = @c5
	where [it''s] = @pkc1
  and [[x]]] = @pkc2
if @@rowcount = 0
    if @@microsoftversion>0x07320000
		Begin
			if exists (Select * from sys.all_parameters where object_id = OBJECT_ID(''sp_MSreplraiserror'') and [name] = ''@param3'')
			Begin
				
				set @primarykey_text = @primarykey_text + ''[it''''s] = '' + convert(nvarchar(100),@pkc1,1) + '', ''
				set @primarykey_text = @primarykey_text + ''[[x]]] = '' + convert(nvarchar(100),@pkc2,1)
				exec sp_MSreplraiserror @errorid=20598, @param1=N''[we ird]]].[Order]]Details; --]'', @param2=@primarykey_text, @param3=13233 
			End
			Else
				exec sp_MSreplraiserror @errorid=20598
		End', N'@c1 int,@c2 nvarchar(10),@c3 int,@c4 nvarchar(20),@c5 date,@pkc1 int,@pkc2 int', ?, ?, ?, ?, ?, ?, ?
go
-- D statement
exec sp_executesql N'declare @primarykey_text nvarchar(100) = ''''
delete [we ird]]].[Order]]Details; --]
	where [it''s] = @pkc1
  and [[x]]] = @pkc2
if @@rowcount = 0
    if @@microsoftversion>0x07320000
		Begin
			if exists (Select * from sys.all_parameters where object_id = OBJECT_ID(''sp_MSreplraiserror'') and [name] = ''@param3'')
			Begin
				
				set @primarykey_text = @primarykey_text + ''[it''''s] = '' + convert(nvarchar(100),@pkc1,1) + '', ''
				set @primarykey_text = @primarykey_text + ''[[x]]] = '' + convert(nvarchar(100),@pkc2,1)
				exec sp_MSreplraiserror @errorid=20598, @param1=N''[we ird]]].[Order]]Details; --]'', @param2=@primarykey_text, @param3=13234 
			End
			Else
				exec sp_MSreplraiserror @errorid=20598
		End', N'@pkc1 int,@pkc2 int', ?, ?
go
